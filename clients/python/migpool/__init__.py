"""Client of the migpool service's HTTP API (standard library only, Python 3.9+).

    from migpool import Client
    c = Client("http://127.0.0.1:8470", token)
    job = c.submit({"name": "train", "command": ["python", "train.py"], "resources": {"profile": "1g.5gb"}})
    for text in c.logs(job["id"]):
        print(text, end="")
    print(c.wait(job["id"])["state"])
"""

from .client import OPERATIONS, ApiError, Client, MigpoolError, ServiceUnreachable

__all__ = ["Client", "MigpoolError", "ApiError", "ServiceUnreachable", "OPERATIONS"]
__version__ = "0.1.0"
