-- Create "web_sessions" table
CREATE TABLE "web_sessions" ("id" character varying NOT NULL, "token_id" uuid NOT NULL, "name" character varying NOT NULL, "admin" boolean NOT NULL, "csrf" character varying NOT NULL, "expires_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "websession_expires_at" to table: "web_sessions"
CREATE INDEX "websession_expires_at" ON "web_sessions" ("expires_at");
