export { runMigrations, type MigrationReport } from "./service.js";
