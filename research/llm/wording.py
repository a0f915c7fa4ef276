"""Word tables of the no-model planner (:mod:`research.llm.decompose`).

``VERBS`` are verbs that end the subject of a question ("When did the extension *open*"), so a
question's subject is the words before them; ``COMPARATIVES`` map irregular and common
comparatives to the adjective a per-side question asks with ("safer" → "How safe is X").
"""

from research.engine.text import word_set

VERBS = word_set(
    """have has had get gets got record records recorded see sees saw attract attracts receive
    receives received pay pays paid make makes made cost costs use uses used serve serves carry
    carries employ employs produce produces sell sells sold reach reaches reached need needs
    require requires take takes took generate generates change changes changed apply applies start
    starts end ends rise rises rose fall falls fell increase increases decrease decreases open
    opens close closes begin begins last lasts launch launches finish finishes peak peaks grow
    grows happen happens occur occurs find finds show shows say says"""
)
COMPARATIVES = {
    "better": "good",
    "worse": "bad",
    "cheaper": "cheap",
    "safer": "safe",
    "larger": "large",
    "bigger": "big",
    "smaller": "small",
    "faster": "fast",
    "slower": "slow",
    "greener": "green",
    "healthier": "healthy",
    "easier": "easy",
    "harder": "hard",
    "riskier": "risky",
    "costlier": "costly",
    "cleaner": "clean",
    "quieter": "quiet",
    "stronger": "strong",
}
