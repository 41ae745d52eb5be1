package dev.elves.contracts;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The Java and Python sides must name the same queues, or the harness watches empty queues. */
class ContractNamesTest {

	private static final Pattern STRING_CONSTANT = Pattern.compile("^([A-Z_]+)\\s*=\\s*\"([^\"]*)\"\\s*$",
			Pattern.MULTILINE);

	private static Map<String, String> python;

	@BeforeAll
	static void readConstantsPy() throws IOException {
		String location = System.getProperty("elves.constantsPy", "../../operator/elves/constants.py");
		Path file = Path.of(location);
		assertThat(file).as("operator/elves/constants.py next to services/").exists();
		python = new HashMap<>();
		Matcher matcher = STRING_CONSTANT.matcher(Files.readString(file));
		while (matcher.find()) {
			python.put(matcher.group(1), matcher.group(2));
		}
	}

	@Test
	void queueNamesEqualThePythonConstants() {
		assertThat(Queues.INGESTOR_DATA).isEqualTo(python.get("QUEUE_INGESTOR_DATA"));
		assertThat(Queues.REGISTRY_APPLOG).isEqualTo(python.get("QUEUE_REGISTRY_APPLOG"));
		assertThat(Queues.REGISTRY_INGESTOR).isEqualTo(python.get("QUEUE_REGISTRY_INGESTOR"));
		assertThat(Queues.REGISTRY_DEAD_REQUESTS).isEqualTo(python.get("QUEUE_REGISTRY_DEAD_REQUESTS"));
	}

	@Test
	void exchangeDeadLetterSuffixAndTestIdHeaderEqualThePythonConstants() {
		assertThat(Queues.EXCHANGE).isEqualTo(python.get("EXCHANGE"));
		assertThat(Queues.DEAD_LETTER_EXCHANGE).isEqualTo(python.get("DEAD_LETTER_EXCHANGE"));
		assertThat(Queues.DEAD_LETTER_SUFFIX).isEqualTo(python.get("DEAD_LETTER_SUFFIX"));
		assertThat(ElvesHeaders.TEST_ID).isEqualTo(python.get("TEST_ID_HEADER"));
	}

}
