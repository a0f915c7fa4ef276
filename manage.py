#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.env import ConfigError

    try:
        execute_from_command_line(sys.argv)
    except ConfigError as exc:
        sys.exit(f"Configuration error: {exc}")


if __name__ == "__main__":
    main()
