"""The versioned JSON API (``/api/v1/``): django-ninja routes over the same access rules
(``research.access``) and writes (``research.services``) as the pages. See docs/api.md."""
