"""zerolint: find zero-length inputs on their way to GPU kernels."""

__version__ = "0.1.0"
