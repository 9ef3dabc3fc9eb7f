-- An agent's profile: its system prompt, tool definitions (JSON Schemas;
-- engram never runs a tool's code), tool rules, model, and what another
-- format said about the agent that engram does not model (kept so that an
-- export to that format writes it back). One row per agent, the profile
-- as one JSON document (memory.Profile): it is read and written whole.
CREATE TABLE agent_profiles (
    agent        TEXT    PRIMARY KEY,
    profile_json TEXT    NOT NULL,
    updated_at   INTEGER NOT NULL
);
