"""The routes of ``/api/v1/``, gathered on one ``api`` (``config/urls.py`` mounts it).

Every run is looked up through ``research.access`` (404 for a run the caller may not see,
403 when they may see it but not act on it) and every change is the same
``research.services`` call the pages make. A team-scoped token sees only its team's runs.

``research.api.base`` holds the API object, the error shape, the access checks and the
serialisers; the routes are by subject:

- ``research.api.runs``: start, list and get runs;
- ``research.api.plan``: the plan and the controls (approve, pause, resume, cancel, refine,
  retry, budget);
- ``research.api.reads``: steps, sources, evidence, the report and its exports;
- ``research.api.shared``: the same reads behind a share link;
- ``research.api.questions``: topics, questions and answers about a report;
- ``research.api.libraries``: libraries, document uploads and deletions.

Importing a route module registers its routes; the order below is the order of the paths in
the OpenAPI document, so keep it.
"""

from __future__ import annotations

# isort: off
from research.api.base import api
from research.api import runs  # noqa: F401
from research.api import plan  # noqa: F401
from research.api import reads  # noqa: F401
from research.api import shared  # noqa: F401
from research.api import questions  # noqa: F401
from research.api import libraries  # noqa: F401

# isort: on

__all__ = ["api"]
