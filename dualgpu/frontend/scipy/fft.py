"""``scipy.fft`` (and ``cupyx.scipy.fft``) on traced values: NumPy's functions of the same
names (:mod:`dualgpu.frontend.numpy.fft`): the shifts trace, the transforms are refused."""
from ..numpy.fft import (
    fft,
    fft2,
    fftn,
    fftshift,
    hfft,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)

__all__ = ["fft", "fft2", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift",
           "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftn"]
