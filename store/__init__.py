"""memvault.store: the memory store (see :mod:`.memory_store`).

numpy's BLAS runs on one thread in memvault (unless the environment says
otherwise). Its products here are small (one query against the rows a first
pass kept), and on a small machine a second BLAS thread contends with the
threads onnxruntime keeps spinning after embedding the query: measured at
100,000 traces on 2 cores, hybrid search went from 13 / 28 ms (median / p95)
with two BLAS threads to 10 / 12 ms with one. It must be set before numpy
loads, hence here, at the top of the package every numpy user imports.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
