"""``python -m tenure.cli``."""

from tenure.cli.app import main

raise SystemExit(main())
