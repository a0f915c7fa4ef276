"""Report templates: kinds of deliverable and the sections each requires.

A run created with a template asks the planner for those sections and the plan records them,
so the synthesizer writes them and the report view can say which are missing.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportTemplate:
    """A kind of deliverable: the sections the report must contain, added to the plan."""

    key: str
    label: str
    purpose: str
    sections: tuple[str, ...]


REPORT_TEMPLATES: dict[str, ReportTemplate] = {
    template.key: template
    for template in (
        ReportTemplate(
            "competitive_analysis",
            "Competitive analysis",
            "Compare products, companies or approaches against explicit criteria.",
            ("Criteria", "Comparison matrix", "Differences and opportunities", "Conclusion"),
        ),
        ReportTemplate(
            "literature_review",
            "Literature review",
            "Survey what published work says about a topic, and how strong it is.",
            (
                "Search scope",
                "Thematic synthesis",
                "Evidence quality and disagreements",
                "Gaps in the literature",
            ),
        ),
        ReportTemplate(
            "due_diligence",
            "Due diligence",
            "Establish the facts and risks about an organisation before a decision.",
            (
                "Entity and scope",
                "Key facts",
                "Risks and gaps",
                "Items to verify",
                "Recommendation",
            ),
        ),
        ReportTemplate(
            "technical_evaluation",
            "Technical evaluation",
            "Judge technical options against requirements and plan how to validate the choice.",
            (
                "Requirements",
                "Option comparison",
                "Performance and maintenance risks",
                "Recommendation",
                "Validation plan",
            ),
        ),
    )
}


def template_sections(key: str) -> tuple[str, ...]:
    """The sections a report template requires (none for no or an unknown template)."""
    template = REPORT_TEMPLATES.get(key)
    return template.sections if template else ()
