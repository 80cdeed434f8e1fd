from django.db import models


class Order(models.Model):
    item = models.TextField()
    shipped = models.BooleanField(default=False)
