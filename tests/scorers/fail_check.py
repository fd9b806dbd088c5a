from _report import write
write([{"name": "adds up", "assertions": 2, "passed": True},
       {"name": "refuses forged insert", "assertions": 1, "passed": False, "message": "insert as B with owner A succeeded", "evidence": "row 17 owner=A"}])
