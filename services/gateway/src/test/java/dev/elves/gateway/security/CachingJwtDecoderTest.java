package dev.elves.gateway.security;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import org.springframework.security.oauth2.jwt.BadJwtException;
import org.springframework.security.oauth2.jwt.Jwt;
import org.springframework.security.oauth2.jwt.JwtDecoder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A verified token is remembered by its text until it expires; failures are checked every time. */
class CachingJwtDecoderTest {

	private static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");

	private final AtomicInteger verifications = new AtomicInteger();

	private JwtDecoder verifier(Instant expiresAt) {
		return (token) -> {
			this.verifications.incrementAndGet();
			if (token.startsWith("bad")) {
				throw new BadJwtException("bad signature");
			}
			return Jwt.withTokenValue(token).header("alg", "HS256").subject("alice").expiresAt(expiresAt).build();
		};
	}

	private static Clock at(Instant instant) {
		return Clock.fixed(instant, ZoneOffset.UTC);
	}

	@Test
	void aVerifiedTokenIsVerifiedOnceUntilItExpires() {
		Instant expiry = NOW.plusSeconds(60);
		CachingJwtDecoder now = new CachingJwtDecoder(verifier(expiry), at(NOW));
		assertThat(now.decode("t1").getSubject()).isEqualTo("alice");
		assertThat(now.decode("t1").getSubject()).isEqualTo("alice");
		assertThat(this.verifications).hasValue(1);
		assertThat(now.decode("t2").getSubject()).isEqualTo("alice");
		assertThat(this.verifications).hasValue(2);
	}

	@Test
	void anExpiredEntryIsVerifiedAgain() {
		Instant expiry = NOW.plusSeconds(60);
		JwtDecoder verifier = verifier(expiry);
		new CachingJwtDecoder(verifier, at(NOW)).decode("t1");
		CachingJwtDecoder later = new CachingJwtDecoder(verifier, at(expiry.plusSeconds(1)));
		later.decode("t1");
		assertThat(this.verifications).hasValue(2);
	}

	@Test
	void aTokenWithoutExpiryIsTrustedForTheMaximumAgeOnly() {
		Instant[] now = { NOW };
		Clock clock = new Clock() {
			@Override
			public ZoneOffset getZone() {
				return ZoneOffset.UTC;
			}

			@Override
			public Clock withZone(java.time.ZoneId zone) {
				return this;
			}

			@Override
			public Instant instant() {
				return now[0];
			}
		};
		CachingJwtDecoder decoder = new CachingJwtDecoder(verifier(null), clock);
		decoder.decode("t1");
		now[0] = NOW.plus(CachingJwtDecoder.MAX_AGE).minus(Duration.ofSeconds(1));
		decoder.decode("t1");
		assertThat(this.verifications).hasValue(1);
		now[0] = NOW.plus(CachingJwtDecoder.MAX_AGE).plusSeconds(1);
		decoder.decode("t1");
		assertThat(this.verifications).hasValue(2);
	}

	@Test
	void failuresAreNeverRemembered() {
		CachingJwtDecoder decoder = new CachingJwtDecoder(verifier(NOW.plusSeconds(60)), at(NOW));
		assertThatThrownBy(() -> decoder.decode("bad")).isInstanceOf(BadJwtException.class);
		assertThatThrownBy(() -> decoder.decode("bad")).isInstanceOf(BadJwtException.class);
		assertThat(this.verifications).hasValue(2);
	}

}
