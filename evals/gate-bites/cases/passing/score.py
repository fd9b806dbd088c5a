from evalrun import scorer

with scorer.check("totals add up") as c:
    c.equal(2 + 2, 4)
    c.true(4 > 0, "totals are positive")

with scorer.check("refunds are negative") as c:
    c.less(-3, 0)
