"""The one sentinel of every index array: no slot, no item, no id, no api, table padding."""

NONE = -1
