-- An agent's profile (as SQLite's 0026_agent_profiles): system prompt,
-- tool definitions, tool rules, model and other formats' extensions, as
-- one JSON document per agent.
CREATE TABLE IF NOT EXISTS agent_profiles (
    agent        TEXT   PRIMARY KEY,
    profile_json TEXT   NOT NULL,
    updated_at   BIGINT NOT NULL
);
