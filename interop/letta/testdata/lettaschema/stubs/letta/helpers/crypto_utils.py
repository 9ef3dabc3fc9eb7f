"""Stub of letta.helpers.crypto_utils: a server without LETTA_ENCRYPTION_KEY."""


class CryptoUtils:
    @staticmethod
    def is_encrypted(value):
        return False

    @staticmethod
    def encrypt(value):
        raise ValueError("No encryption key configured")

    @staticmethod
    async def encrypt_async(value):
        raise ValueError("No encryption key configured")

    @staticmethod
    def decrypt(value):
        raise ValueError("No encryption key configured")

    @staticmethod
    async def decrypt_async(value):
        raise ValueError("No encryption key configured")
