from evalrun import scorer

# "refunds are negative" used to be here; it was deleted.
with scorer.check("totals add up") as c:
    c.equal(2 + 2, 4)
