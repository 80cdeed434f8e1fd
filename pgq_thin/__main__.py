"""``python -m pgq_thin`` is the same as the ``pgq-thin`` command."""

from pgq_thin.cli import main

raise SystemExit(main())
