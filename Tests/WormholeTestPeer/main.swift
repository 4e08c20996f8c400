print("peer")
