/** The kinds of database Loupe reads (a connection's `type`); the guard has a check for each. */
export type DbType = 'POSTGRES' | 'MYSQL' | 'MARIADB' | 'MSSQL' | 'MONGODB' | 'SQLITE';
