from evalrun import scorer

with scorer.check("totals add up") as c:
    c.equal(2 + 2, 5, "order total")
