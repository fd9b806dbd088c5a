rows = {"owner": "A"}


def lookup(r):
    return r["tenant"]


print("scoring...")
lookup(rows)
