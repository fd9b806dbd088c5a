def tenant_of(row: dict) -> str:
    return row["tenant"]


print("loading rows")
tenant_of({"owner": "a"})
