package dev.elves.registry.web;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.Set;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import dev.elves.web.InvalidInputException;
import dev.elves.web.TestIds;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a k6 runner holds instead of the service key: an HS256 JWT the harness signs for one run
 * (elves.engine.planning.credentials). {@code sub} is the run's test id, {@code scope} what the runner may
 * call (space-separated, see {@link RunScope}), {@code exp} the end of the run. It is signed with a
 * key derived from the service key (HMAC-SHA256 of {@link #DERIVATION} under the service key), so
 * the registry needs no second secret, and a runner that reads its credential learns neither the
 * service key nor anything that opens another test.
 *
 * @param testId    the only test id this run may write logs under and read the ledger of
 * @param scopes    the {@link RunScope} values granted
 * @param expiresAt after this instant the credential is refused with 401
 */
record RunCredential(String testId, Set<String> scopes, Instant expiresAt) {

	/** The label the signing key is derived with; the harness uses the same. */
	static final String DERIVATION = "elves run credential";

	static final String ISSUER = "elves";

	static final String AUDIENCE = "elves-registry";

	/** A credential that cannot be used, with the reason a caller is told (401). */
	static final class Refused extends Exception {

		Refused(String reason) {
			super(reason);
		}

	}

	/** The signing key of run credentials, derived from the service key. */
	static byte[] signingKey(byte[] serviceKey) {
		return hmac(serviceKey, DERIVATION.getBytes(StandardCharsets.UTF_8));
	}

	/** The credential {@code token} stands for, if it is signed with {@code key} and not expired at {@code now}. */
	static RunCredential verify(String token, byte[] key, Instant now, JsonMapper mapper) throws Refused {
		String[] parts = token.split("\\.", -1);
		if (parts.length != 3) {
			throw new Refused("run credential: not a JWT (three dot-separated parts)");
		}
		JsonNode header = json(parts[0], mapper);
		// Only the algorithm the harness signs with; "none" or a public-key algorithm would let
		// the token choose how it is checked.
		if (!"HS256".equals(header.path("alg").asString(""))) {
			throw new Refused("run credential: only HS256 is accepted");
		}
		byte[] expected = hmac(key, (parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
		if (!MessageDigest.isEqual(expected, decode(parts[2]))) {
			throw new Refused("run credential: bad signature");
		}
		JsonNode claims = json(parts[1], mapper);
		if (!ISSUER.equals(claims.path("iss").asString("")) || !AUDIENCE.equals(claims.path("aud").asString(""))) {
			throw new Refused("run credential: not issued by elves for the registry");
		}
		JsonNode exp = claims.path("exp");
		if (!exp.isIntegralNumber() || !exp.canConvertToLong()) {
			throw new Refused("run credential: no expiry (exp)");
		}
		Instant expiresAt = Instant.ofEpochSecond(exp.longValue());
		if (!now.isBefore(expiresAt)) {
			throw new Refused("run credential: expired at " + expiresAt);
		}
		String testId;
		try {
			testId = TestIds.check(claims.path("sub").asString(""));
		}
		catch (InvalidInputException ex) {
			throw new Refused("run credential: its test id (sub) is not one: " + ex.getMessage());
		}
		if (testId == null) {
			throw new Refused("run credential: no test id (sub)");
		}
		Set<String> scopes = Set.copyOf(Arrays.asList(claims.path("scope").asString("").trim().split("\\s+")));
		return new RunCredential(testId, scopes, expiresAt);
	}

	private static JsonNode json(String part, JsonMapper mapper) throws Refused {
		try {
			JsonNode node = mapper.readTree(decode(part));
			if (node == null || !node.isObject()) {
				throw new Refused("run credential: a part is not a JSON object");
			}
			return node;
		}
		catch (JacksonException ex) {
			throw new Refused("run credential: a part is not JSON");
		}
	}

	private static byte[] decode(String part) throws Refused {
		try {
			return Base64.getUrlDecoder().decode(part);
		}
		catch (IllegalArgumentException ex) {
			throw new Refused("run credential: a part is not base64url");
		}
	}

	private static byte[] hmac(byte[] key, byte[] data) {
		try {
			Mac mac = Mac.getInstance("HmacSHA256");
			mac.init(new SecretKeySpec(key, "HmacSHA256"));
			return mac.doFinal(data);
		}
		catch (GeneralSecurityException ex) {
			throw new IllegalStateException("HmacSHA256 is part of every Java runtime", ex);
		}
	}

}
