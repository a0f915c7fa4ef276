import pytest
from django.urls import reverse

from research.highlight import Span, highlight_spans
from research.models import ResearchEvidence
from tests.research.test_models import make_evidence, make_source

ADMIN_PAGES = [
    "admin:research_researchrun_changelist",
    "admin:research_researchstep_changelist",
    "admin:research_researchsource_changelist",
    "admin:research_researchevidence_changelist",
]


@pytest.fixture
def audited_run(private_run):
    source = make_source(
        private_run,
        snapshot_text="Intro. Heat pumps sold: 2.6 million in 2023. <script>alert(1)</script> End.",
        title="Market report",
    )
    make_evidence(
        source,
        excerpt="2.6 million in 2023",
        locator={"kind": "html", "start": 24, "end": 43, "snapshot_hash": "b" * 64},
    )
    return private_run, source


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_lists_load_for_staff(client, staff, audited_run, page):
    client.force_login(staff)
    assert client.get(reverse(page)).status_code == 200


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_admin_refuses_non_staff(client, owner, audited_run, page):
    client.force_login(owner)
    response = client.get(reverse(page))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


def test_admin_refuses_anonymous(client, audited_run):
    assert client.get(reverse("admin:index")).status_code == 302


def test_run_page_shows_counts_and_steps(client, staff, audited_run):
    run, _ = audited_run
    client.force_login(staff)
    page = client.get(reverse("admin:research_researchrun_changelist")).content.decode()
    assert run.question[:40] in page
    detail = client.get(reverse("admin:research_researchrun_change", args=[run.pk]))
    assert detail.status_code == 200


def test_source_page_highlights_evidence_at_stored_offsets(client, staff, audited_run):
    _, source = audited_run
    client.force_login(staff)
    page = client.get(
        reverse("admin:research_researchsource_change", args=[source.pk])
    ).content.decode()
    assert '">2.6 million in 2023</mark>' in page
    # Untrusted snapshot text is escaped, never rendered as markup.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_evidence_can_be_filtered_by_stance_and_source_class(client, staff, audited_run):
    client.force_login(staff)
    url = reverse("admin:research_researchevidence_changelist")
    assert "2.6 million" in client.get(url, {"stance": "supports"}).content.decode()
    assert "2.6 million" not in client.get(url, {"stance": "contradicts"}).content.decode()
    assert "2.6 million" in client.get(url, {"source__source_class": "unknown"}).content.decode()
    assert "2.6 million" in client.get(url, {"q": "2.6 million"}).content.decode()


def test_evidence_can_be_filtered_by_claim_key_and_run(client, staff, audited_run):
    run, _ = audited_run
    ResearchEvidence.objects.filter(run=run).update(claim_key="eu_sales_2023")
    client.force_login(staff)
    url = reverse("admin:research_researchevidence_changelist")
    assert "2.6 million" in client.get(url, {"claim_key": "eu_sales_2023"}).content.decode()
    assert "2.6 million" not in client.get(url, {"claim_key": "other"}).content.decode()
    assert "2.6 million" in client.get(url, {"run__id__exact": str(run.pk)}).content.decode()


def test_engine_written_rows_are_read_only_for_staff(client, staff, audited_run):
    run, source = audited_run
    client.force_login(staff)
    assert client.get(reverse("admin:research_researchevidence_add")).status_code == 403
    response = client.post(
        reverse("admin:research_researchsource_change", args=[source.pk]), {"title": "edited"}
    )
    assert response.status_code == 403
    source.refresh_from_db()
    assert source.title == "Market report"
    assert (
        client.post(
            reverse("admin:research_researchrun_delete", args=[run.pk]), {"post": "yes"}
        ).status_code
        == 403
    )


def test_highlight_clips_overlapping_and_out_of_range_spans():
    html = highlight_spans("abcdefgh", [Span(1, 4, "x"), Span(2, 6, "y"), Span(20, 30, "z")])
    assert (
        str(html)
        == 'a<mark class="evidence" title="x">bcd</mark><mark class="evidence" title="y">ef</mark>gh'
    )


def test_highlight_escapes_text_and_labels():
    html = highlight_spans("<b>x</b>", [Span(3, 4, '"><script>')])
    assert "<b>" not in str(html)
    assert "<script>" not in str(html)
