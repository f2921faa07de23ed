"""compiler.backends.cuda: the CUDA backend (``numba.cuda``), and CUDA tensors.

Room: compiler. ``device`` finds the GPU (or Numba's simulator), ``array`` is a CUDA
tensor's storage, ``eager`` runs eager ops on it by compiling one-op graphs, ``renderer``
spells a Schedule as ``numba.cuda`` kernels, ``program`` launches them, ``scalar`` holds
their device functions, ``ptx`` compiles them for a real GPU without one. The eager rooms
reach this package only through ``numgrad.devices``; nothing here imports
``backends.cpu``.
"""
