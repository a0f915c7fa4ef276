"""Fixtures for source acquisition tests: the frozen web and fakes for DNS and sockets."""

from __future__ import annotations
