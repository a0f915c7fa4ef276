"""The shutdown flag of this worker process.

Set when the process begins a graceful shutdown: heartbeats then release leases at the next
safe point instead of renewing them. It imports nothing of Django's models, because Dramatiq
loads the middleware that sets it (``research.worker.reaper``) before the models are ready.
"""

from __future__ import annotations

import threading

SHUTTING_DOWN = threading.Event()
