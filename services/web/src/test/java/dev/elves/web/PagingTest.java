package dev.elves.web;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Pages reach the first {@link Paging#MAX_ROWS} rows and no further, named by the parameter at fault. */
class PagingTest {

	@Test
	void theLastPageWithinTheBoundIsServedAndTheNextRefusedNamingPage() {
		assertThat(new Paging(19, 500).offset()).isEqualTo(9_500);
		assertThat(new Paging(9_999, 1).offset()).isEqualTo(9_999);
		assertThatThrownBy(() -> new Paging(20, 500)).isInstanceOfSatisfying(InvalidInputException.class,
				(ex) -> {
					assertThat(ex.field()).isEqualTo("page");
					assertThat(ex.getMessage())
						.isEqualTo("page: pages reach only the first 10000 rows; with size 500 the last page is 19");
				});
		assertThatThrownBy(() -> new Paging(10_000, 1)).isInstanceOf(InvalidInputException.class);
	}

	@Test
	void aPageThatWouldOverflowAnIntIsRefusedToo() {
		assertThatThrownBy(() -> new Paging(Integer.MAX_VALUE, 500)).isInstanceOfSatisfying(
				InvalidInputException.class, (ex) -> assertThat(ex.field()).isEqualTo("page"));
	}

}
