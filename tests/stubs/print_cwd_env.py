"""Print the working directory and the environment as JSON."""

import json
import os

print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
