print("all good, honest")
