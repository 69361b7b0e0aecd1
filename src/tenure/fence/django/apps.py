"""The Django app that owns the fence table's migration."""

from __future__ import annotations

from django.apps import AppConfig  # type: ignore[import-untyped]


class FenceConfig(AppConfig):  # type: ignore[misc]
    name = "tenure.fence.django"
    label = "tenure_fence"
    verbose_name = "tenure fence"
    default_auto_field = "django.db.models.BigAutoField"
