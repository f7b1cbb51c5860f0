"""What the lab proved: the checklist's items and verdict, and the baseline card.

:mod:`~gpulab.verdict.checklist` (every item from the stack outputs, and the overall verdict),
:mod:`~gpulab.verdict.items` (the items with a module of their own) and
:mod:`~gpulab.verdict.card` (the baseline card: model, Markdown, HTML, JSON; ``python -m
gpulab.verdict.card``). Pure functions of the stack outputs.

May import: :mod:`gpulab.kube` (the parsers of what the checks read), :mod:`gpulab.diagnose`,
:mod:`gpulab.host`, :mod:`gpulab.config`, :mod:`gpulab.core`, :mod:`gpulab.tflops`. Not the
components, the variants or anything above.
"""
