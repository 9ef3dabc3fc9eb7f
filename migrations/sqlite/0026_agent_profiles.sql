-- An agent's profile: its system prompt, tool definitions (JSON Schemas;
-- engram never runs a tool's code), tool rules, model, and what another
-- format said about the agent that engram does not model (kept so that an
-- export to that format writes it back). One row per agent, the profile
-- as one JSON document (memory.Profile): it is read and written whole.
-- IF NOT EXISTS: a store rolled back to an earlier version by a test
-- (tables of later migrations kept) migrates forward again.
CREATE TABLE IF NOT EXISTS agent_profiles (
    agent        TEXT    PRIMARY KEY,
    profile_json TEXT    NOT NULL,
    updated_at   INTEGER NOT NULL
);
