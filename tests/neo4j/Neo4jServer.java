import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.QueryExecutionException;

/**
 * A Neo4j community server for the tests: the embedded DBMS with its Bolt connector,
 * configured by HOME/neo4j.conf (server.sh writes it). With a password, the `neo4j`
 * user gets it before "ready" is printed, so no client ever meets the default one.
 * Runs until SIGTERM / SIGINT, then shuts the DBMS down cleanly (the data directory
 * can be started again).
 *
 * Usage: java -cp LIB/*:CLASSES Neo4jServer HOME [PASSWORD]
 */
public final class Neo4jServer {
    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: Neo4jServer HOME [PASSWORD]");
            System.exit(2);
        }
        try {
            serve(args);
        } catch (Throwable e) {
            // Exit (the shutdown hook stops what started): the DBMS's own threads would
            // otherwise keep a failed server alive.
            e.printStackTrace();
            System.exit(1);
        }
    }

    private static void serve(String[] args) throws Exception {
        Path home = Path.of(args[0]).toAbsolutePath();
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .loadPropertiesFromFile(home.resolve("neo4j.conf"))
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            dbms.shutdown();
            stopped.countDown();
        }, "neo4j-shutdown"));
        if (args.length == 2) {
            setPassword(dbms, args[1]);
        }
        String bolt = Files.readAllLines(home.resolve("neo4j.conf")).stream()
                .filter(l -> l.startsWith("server.bolt.listen_address="))
                .map(l -> l.substring(l.indexOf('=') + 1))
                .findFirst()
                .orElse("?");
        System.out.println("neo4j ready bolt://" + bolt);
        System.out.flush();
        stopped.await();
    }

    /** Gives user `neo4j` the password (a data directory started before has it already). */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        try {
            dbms.database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        } catch (QueryExecutionException e) {
            if (!e.getMessage().contains("Old password and new password cannot be the same")) {
                throw e;
            }
        }
    }
}
