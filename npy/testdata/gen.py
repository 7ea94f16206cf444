#!/usr/bin/python3
"""Writes the NumPy-made fixtures of package npy (run by hand, not by CI):

    cd npy/testdata && /usr/bin/python3 gen.py

Written with Debian's python3-numpy (numpy.__version__ is recorded in
numpy-version.txt). The values are formulas that npy/numpy_test.go
recomputes; change both together.
"""
import numpy as np
import numpy.lib.format as fmt

def c34():       # 3x4, float: 0.5*i - 1
    return (np.arange(12).reshape(3, 4) * 0.5 - 1)

def f234():      # 2x3x4 in Fortran order, float: 100*i + 10*j + k
    i, j, k = np.indices((2, 3, 4))
    return np.asfortranarray((100 * i + 10 * j + k).astype('<f8'))

np.save('c_f4.npy', c34().astype('<f4'))
np.save('fortran_f8.npy', f234())
np.save('fortran_i4.npy', np.asfortranarray(np.arange(12, dtype='<i4').reshape(3, 4) - 5))
np.save('f16.npy', np.array([[0, 0.5, -2], [65504, 2.0**-14, 1.5]], dtype='<f2'))
np.save('be_f4.npy', (np.arange(6).reshape(2, 3) + 0.25).astype('>f4'))
np.save('be_i8.npy', (np.arange(5) * -3000000000).astype('>i8'))
np.save('i32.npy', np.array([-3, 0, 7, 2**31 - 1, -2**31], dtype='<i4'))
np.save('bool.npy', np.array([True, False, True, True]))
np.save('u8.npy', np.array([0, 1, 2**64 - 1], dtype='<u8'))
np.save('u1.npy', np.array([0, 7, 255], dtype='u1'))
np.save('scalar_f8.npy', np.float64(2.5))
np.save('object.npy', np.array([{'a': 1}, None], dtype=object), allow_pickle=True)
with open('v2_i8.npy', 'wb') as f:
    fmt.write_array(f, np.arange(5, dtype='<i8') * 7, version=(2, 0))
with open('v3_f4.npy', 'wb') as f:
    fmt.write_array(f, c34().astype('<f4'), version=(3, 0))

arrays = dict(edge_index=np.stack([np.arange(10) % 4, (np.arange(10) * 3) % 4]).astype('<i8'),
              node_feat=c34().astype('<f4'),
              num_nodes_list=np.array([4], dtype='<i8'))
np.savez('savez.npz', **arrays)
np.savez_compressed('savez_compressed.npz', **arrays)

# A deflated Fortran-order node_feat (read by rows in one streamed pass).
np.savez_compressed('fortran_compressed.npz', node_feat=f234(),
                    ints=np.asfortranarray(np.arange(12, dtype='<i4').reshape(3, 4) - 5))

# Zip64 throughout (zip64 extra fields in the central directory and the
# zip64 end of central directory), which NumPy writes for archives over
# 4 GiB: force it on a small one by lowering zipfile's limits.
import zipfile
zipfile.ZIP64_LIMIT = 0
zipfile.ZIP_FILECOUNT_LIMIT = 0
np.savez('zip64.npz', **arrays)

with open('numpy-version.txt', 'w') as f:
    f.write(np.__version__ + '\n')
