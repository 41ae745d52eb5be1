package dev.elves.gateway.activity;

import java.util.List;

/** The load-test names of the gateway's calls (k6 tag, activity-log endpoint, counter tag). */
public final class Endpoints {

	public static final String GET_DATA = "getData";

	public static final String GET_STATUS = "getStatus";

	public static final String GET_IMAGE = "getImage";

	public static final String GET_HISTORY = "getHistory";

	public static final String GET_ALL_HISTORY = "getAllHistory";

	public static final String GET_USER = "getUser";

	public static final String GET_ALL_USERS = "getAllUsers";

	public static final List<String> ALL = List.of(GET_DATA, GET_STATUS, GET_IMAGE, GET_HISTORY, GET_ALL_HISTORY,
			GET_USER, GET_ALL_USERS);

	private Endpoints() {
	}

}
