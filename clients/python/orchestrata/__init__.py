"""Python client for the Orchestrata gateway (docs/clients.md).

    async with await Gateway.connect("ws://127.0.0.1:18790/", token=TOKEN) as gw:
        async for packet in gw.volk("U:Vz", cursor="vz.cursor").inbox():
            await packet.reply({"echo": packet.payload})
"""

from . import errors
from .agent import Packet, Volk
from .client import Gateway, hmac_params
from .errors import *  # noqa: F403 -- one class per gateway error

__all__ = ["Gateway", "Volk", "Packet", "errors", "hmac_params"] + [
    name for name in dir(errors) if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception)
]
__version__ = "0.1.0"
