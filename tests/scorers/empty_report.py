from _report import write
write([])
