"""No module under research/llm/ names an entity of the benchmark corpora.

The entity list is built here from the task files of every set (fictional, tune, held-out),
never typed in: the names of the sites the answers come from (the parts of every source and
gold-page host that the tasks write capitalised and never as an ordinary lower-case word), the
documentation sets, runs of two or more capitalised words in the
questions ("Warm Homes", "Solvik Energy Agency") and names with a technical shape
("Buffer.allocUnsafe", "EventEmitter"). A failure names the module and how many entities it
names, not which: the held-out tasks' names are not for reading while tuning.
"""

import json
import re
from pathlib import Path

from evals.taskset import TASK_SETS, TASKS_DIR

LLM_DIR = Path(__file__).resolve().parents[2] / "research" / "llm"
# Host labels that name the kind of site, not the entity ("docs.", "www.", "wiki.").
_GENERIC_LABELS = frozenset(
    ("www", "docs", "doc", "api", "en", "wiki", "news", "blog", "test", "org", "com", "net", "io")
)
_TECHNICAL = re.compile(r"[A-Za-z]+(?:[a-z][A-Z]|[._][A-Za-z])[\w.]*")
_CAPITALISED_RUN = re.compile(r"(?<![\w.])(?:[A-Z][a-z]+\s+){1,4}[A-Z][a-z]+")
_FUNCTION_WORDS = frozenset(
    ("How", "What", "Which", "When", "Why", "Does", "Is", "Can", "Do", "The", "In", "On")
)


def _host_names(host: str) -> set[str]:
    labels = host.split(":")[0].split(".")[:-1]  # without the top-level domain
    parts = {part for label in labels for part in label.split("-")}
    return {part for part in parts if len(part) >= 4 and part not in _GENERIC_LABELS}


def corpus_entities() -> set[str]:
    names: set[str] = set()
    hosts_names: set[str] = set()
    capitalised: set[str] = set()
    ordinary: set[str] = set()
    for task_set in TASK_SETS:
        for path in sorted((TASKS_DIR / task_set).glob("*.json")):
            task = json.loads(path.read_text(encoding="utf-8"))
            hosts = [*task.get("primary_sources", []), *task.get("gold_pages", [])]
            hosts += [passage["source"] for passage in task.get("gold_passages", [])]
            for host in hosts:
                hosts_names |= _host_names(host.split("/")[0])
            text = f"{task['question']} {task.get('notes', '')}"
            capitalised |= {w.casefold() for w in re.findall(r"(?<![\w.-])[A-Z][a-z]+", text)}
            prose = " ".join([text, *(p["text"] for p in task.get("gold_passages", []))])
            ordinary |= set(re.findall(r"(?<![\w.-])[a-z]+(?![\w-])", prose))
            if task.get("docset"):
                names.add(task["docset"])
            question = task["question"]
            for run in _CAPITALISED_RUN.findall(question):
                named = [w for w in run.split() if w not in _FUNCTION_WORDS]
                if len(named) >= 2:
                    names.add(" ".join(named))
            names |= {m.group(0).rstrip(".") for m in _TECHNICAL.finditer(question)}
    # A host part counts when the tasks write it as a name ("Harwick") and never as an
    # ordinary word ("research", "energy").
    names |= (hosts_names & capitalised) - ordinary
    return {name for name in names if len(name) >= 4}


def test_the_entity_list_is_not_empty():
    entities = corpus_entities()
    assert len(entities) > 20
    assert any(" " in name for name in entities)  # multi-word names are found too


def test_no_module_under_research_llm_names_a_corpus_entity():
    patterns = [
        re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)
        for name in sorted(corpus_entities())
    ]
    offending: dict[str, int] = {}
    for module in sorted(LLM_DIR.glob("*.py")):
        source = module.read_text(encoding="utf-8")
        count = sum(1 for pattern in patterns if pattern.search(source))
        if count:
            offending[module.name] = count
    report = ", ".join(f"{name} names {count}" for name, count in offending.items())
    assert not offending, f"corpus entities named under research/llm/: {report}"
