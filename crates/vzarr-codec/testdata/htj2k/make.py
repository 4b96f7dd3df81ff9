"""Writes the HTJ2K codestreams the tests of vzarr-codec's htj2k module decode: small images
coded by OpenJPH through imagecodecs (what hdf5plugin's HTJ2K filter uses), with the values
OpenJPH decodes them to for the irreversible one.

Run from this folder with a Python that has numpy and imagecodecs (e.g. the interop venv):
    python make.py
"""

import imagecodecs
import numpy as np

y, x = np.mgrid[0:16, 0:24]

# The images the Rust tests compute again.
u16 = ((x * 37 + y * 101 + (x * y) % 13 * 50) % 65536).astype(np.uint16)
i8 = ((x * 11 + y * 5) % 256 - 128).astype(np.int8)
rgb = np.stack([(x * 7 + y * 3 + c * 50) % 256 for c in range(3)], axis=-1).astype(np.uint8)

with open("u16.j2c", "wb") as f:
    f.write(imagecodecs.htj2k_encode(u16))
with open("i8.j2c", "wb") as f:
    f.write(imagecodecs.htj2k_encode(i8))
with open("rgb.j2c", "wb") as f:
    f.write(imagecodecs.htj2k_encode(rgb))
lossy = imagecodecs.htj2k_encode(u16, level=0.01)
with open("u16-lossy.j2c", "wb") as f:
    f.write(lossy)
with open("u16-lossy.openjph.le", "wb") as f:
    f.write(imagecodecs.htj2k_decode(lossy).astype("<u2").tobytes())
