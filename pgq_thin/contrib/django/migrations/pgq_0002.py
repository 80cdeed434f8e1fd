"""Install schema ``pgq`` at its revision 0002, in this migration's transaction.

A later package release that ships pgq revision 0003 adds a migration here calling
``upgrade("0003")``: each Django migration installs a fixed pgq revision, so a project's history
means the same on every machine.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations

from pgq_thin.contrib.django._schema import downgrade, upgrade


class Migration(migrations.Migration):
    initial = True
    dependencies: ClassVar[list[tuple[str, str]]] = []
    operations: ClassVar[list[Any]] = [
        migrations.RunPython(upgrade("0002"), downgrade, elidable=False)
    ]
