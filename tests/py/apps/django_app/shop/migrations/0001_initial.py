"""The shop's first migration; it needs pgq installed first (a trigger could enqueue)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = [("pgq_thin", "pgq_0002")]  # noqa: RUF012 - Django's own shape
    operations = [  # noqa: RUF012
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("item", models.TextField()),
                ("shipped", models.BooleanField(default=False)),
            ],
        ),
    ]
