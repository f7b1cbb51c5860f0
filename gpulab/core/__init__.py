"""The lab's one-of-each modules, which every other package builds on.

:mod:`~gpulab.core.errors` (``GpuLabError``, the base of every error), :mod:`~gpulab.core.names`
(each name and constant once), :mod:`~gpulab.core.findings` (the one finding record),
:mod:`~gpulab.core.fixes` and :mod:`~gpulab.core.fixes_operator` (every first fix, written
once), :mod:`~gpulab.core.run` (the one subprocess runner), :mod:`~gpulab.core.argv` (a
command line as JSON, run without a shell), :mod:`~gpulab.core.outputs` (the stack output
keys), :mod:`~gpulab.core.cuda` (the CUDA/driver compatibility table the fixes quote),
:mod:`~gpulab.core.yamlio` (YAML read with libyaml's safe loader), :mod:`~gpulab.core.rawapi`
(API reads as the API server's own bytes, past the ``kubernetes`` client's models) and
:mod:`~gpulab.core.shutdown` (a process's exit without the last garbage collections).

May import: the standard library and third-party packages only; nothing else of the project.
"""
