from _report import write
write([{"name": "same", "assertions": 1, "passed": True}, {"name": "same", "assertions": 1, "passed": True}])
