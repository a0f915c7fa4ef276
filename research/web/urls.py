from django.urls import path

from research.web import libraries, questions, reports, usage, views

app_name = "research"

# Parts of the workspace HTMX reloads; the plan and sharing URLs answer GET with theirs.
_SECTIONS = ("header", "progress", "timeline", "sources", "controls")


def _question_paths(prefix: str, name_prefix: str) -> list:
    """The Questions tab, once under a run and once under its share link."""
    routes = [
        ("questions/", questions.questions, "questions"),
        ("questions/new/", questions.topic_new, "topic_new"),
        ("questions/<uuid:topic_id>/", questions.topic_detail, "topic_detail"),
        ("questions/<uuid:topic_id>/ask/", questions.topic_ask, "topic_ask"),
        (
            "questions/<uuid:topic_id>/turns/<uuid:turn_id>/<slug:action>/",
            questions.turn_action,
            "turn_action",
        ),
    ]
    return [
        path(f"{prefix}/{route}", view, name=f"{name_prefix}{name}") for route, view, name in routes
    ]


urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("new/", views.run_new, name="run_new"),
    path("usage/", usage.usage, name="usage"),
    path("usage.csv", usage.usage_csv, name="usage_csv"),
    path("usage/team/<int:team_id>/", usage.usage, name="team_usage"),
    path("usage/team/<int:team_id>.csv", usage.usage_csv, name="team_usage_csv"),
    path("new/hints/", views.composer_hints, name="composer_hints"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<uuid:run_id>/plan/", views.run_plan, name="run_plan"),
    path("runs/<uuid:run_id>/sharing/", views.run_sharing, name="run_sharing"),
    path("runs/<uuid:run_id>/controls/<slug:action>/", views.run_control, name="run_control"),
    path("runs/<uuid:run_id>/report/", reports.run_report, name="run_report"),
    path("runs/<uuid:run_id>/report.md", reports.report_markdown_export, name="report_markdown"),
    path("runs/<uuid:run_id>/report.pdf", reports.report_pdf_export, name="report_pdf"),
    path(
        "runs/<uuid:run_id>/evidence/<str:evidence_id>/",
        reports.evidence_detail,
        name="evidence_detail",
    ),
    path(
        "runs/<uuid:run_id>/sources/<uuid:source_id>/",
        views.source_detail,
        name="source_detail",
    ),
    *[
        path(
            f"runs/<uuid:run_id>/{section}/",
            views.run_section,
            {"section": section},
            name=f"run_{section}",
        )
        for section in _SECTIONS
    ],
    path("libraries/", libraries.library_list, name="library_list"),
    path("libraries/<uuid:library_id>/", libraries.library_detail, name="library_detail"),
    path("libraries/<uuid:library_id>/delete/", libraries.library_delete, name="library_delete"),
    path("documents/<uuid:document_id>/", libraries.document_detail, name="document_detail"),
    path("documents/<uuid:document_id>/delete/", libraries.document_delete, name="document_delete"),
    *_question_paths("runs/<uuid:run_id>", ""),
    path(
        "runs/<uuid:run_id>/questions/link-asking/",
        questions.link_asking,
        name="questions_link_asking",
    ),
    *_question_paths("share/<str:share_token>", "shared_"),
    path("share/<str:share_token>/", reports.run_shared, name="run_shared"),
    path("share/<str:share_token>/report.md", reports.shared_markdown, name="shared_markdown"),
    path("share/<str:share_token>/report.pdf", reports.shared_pdf, name="shared_pdf"),
    path(
        "share/<str:share_token>/evidence/<str:evidence_id>/",
        reports.shared_evidence,
        name="shared_evidence",
    ),
]
