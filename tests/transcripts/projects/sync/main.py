print("hello from ferry")
