export { runMigrations, type MigrationReport } from "./migrate.js";
