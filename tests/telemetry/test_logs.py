"""LOG_FORMAT=json: one JSON object per line, with the run and step ids on research lines."""

from __future__ import annotations

import json
import logging

from config.logs import JsonFormatter, ResearchContext
from research.engine import observe


def _format(record: logging.LogRecord) -> dict:
    ResearchContext().filter(record)
    return json.loads(JsonFormatter().format(record))


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("research.worker.actors", logging.INFO, __file__, 1, message, (), None)


def test_a_line_inside_a_run_and_a_step_names_both():
    with observe.working_on("run-1", "step-9"):
        line = _format(_record("Reading a source"))
    assert line["run_id"] == "run-1" and line["step_id"] == "step-9"
    assert line["level"] == "INFO" and line["message"] == "Reading a source"
    assert line["logger"] == "research.worker.actors"


def test_a_line_outside_any_run_has_no_ids():
    line = _format(_record("Server started"))
    assert "run_id" not in line and "step_id" not in line


def test_work_handed_to_a_pool_keeps_the_ids():
    from concurrent.futures import ThreadPoolExecutor

    with observe.working_on("run-2", "step-3"), ThreadPoolExecutor(1) as pool:
        carried = pool.submit(observe.carry_context(lambda: _format(_record("x")))).result()
        plain = pool.submit(lambda: _format(_record("y"))).result()
    assert carried["run_id"] == "run-2" and carried["step_id"] == "step-3"
    assert "run_id" not in plain


def test_a_traceback_is_one_field_of_the_same_line():
    try:
        raise ValueError("bad")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "research", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: bad" in json.loads(line)["exception"]
