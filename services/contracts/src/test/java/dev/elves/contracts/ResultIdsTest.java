package dev.elves.contracts;

import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ResultIdsTest {

	@Test
	void sameRequestAndTypeGiveTheSameIdAcrossCalls() {
		UUID request = UUID.fromString("0b6f1f9e-3c1a-4d35-9a57-2a1f1c1d2e3f");
		assertThat(ResultIds.derive(request, MessageTypes.PLOT_COMPLETED))
			.isEqualTo(ResultIds.derive(UUID.fromString(request.toString()), MessageTypes.PLOT_COMPLETED));
	}

	@Test
	void typesAndRequestsGiveDistinctIds() {
		UUID request = UUID.randomUUID();
		assertThat(ResultIds.derive(request, MessageTypes.PLOT_STARTED))
			.isNotEqualTo(ResultIds.derive(request, MessageTypes.PLOT_COMPLETED))
			.isNotEqualTo(ResultIds.derive(UUID.randomUUID(), MessageTypes.PLOT_STARTED))
			.isNotEqualTo(request);
	}

}
