package dev.elves.gateway;

import java.time.Instant;
import java.util.Date;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;

/** Real HS256 tokens, signed the way `elves token` signs them. */
public final class TestTokens {

	public static final String SECRET = "test-secret-test-secret-test-secret!";

	public static final String SECRET_PROPERTY = "elves.jwt.secret=" + SECRET;

	private TestTokens() {
	}

	public static String bearer(String user) {
		return "Bearer " + sign(SECRET, user, false, Instant.now().plusSeconds(3600));
	}

	public static String adminBearer(String user) {
		return "Bearer " + sign(SECRET, user, true, Instant.now().plusSeconds(3600));
	}

	public static String sign(String secret, String user, boolean admin, Instant expires) {
		JWTClaimsSet.Builder claims = claims(user, expires).claim("admin", admin);
		return sign(secret, claims.build());
	}

	/** The claims `elves token` writes for {@code user}, to change one of them. */
	public static JWTClaimsSet.Builder claims(String user, Instant expires) {
		JWTClaimsSet.Builder claims = new JWTClaimsSet.Builder().issueTime(new Date())
			.issuer("elves")
			.audience("elves-gateway");
		if (expires != null) {
			claims.expirationTime(Date.from(expires));
		}
		if (user != null) {
			claims.subject(user);
		}
		return claims;
	}

	public static String sign(String secret, JWTClaimsSet claims) {
		SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims);
		try {
			jwt.sign(new MACSigner(secret.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
		}
		catch (JOSEException ex) {
			throw new IllegalStateException(ex);
		}
		return jwt.serialize();
	}

}
