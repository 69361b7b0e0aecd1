"""Creates the fence table (the statement :meth:`TableFence.install` runs)."""

from __future__ import annotations

from django.db import migrations  # type: ignore[import-untyped]

from tenure.fence.table import TableFence


class Migration(migrations.Migration):  # type: ignore[misc]
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [
        migrations.RunSQL(
            TableFence().sql("install", "sqlite"),
            reverse_sql="DROP TABLE IF EXISTS tenure_fence",
        )
    ]
