package dev.elves.web;

import java.time.Duration;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;

/**
 * The {@link ShutdownDrain} of a service that answers HTTP, first in the filter chain so that
 * every answer, a refusal too, ends its connection once shutdown has begun. The services'
 * own filters come after it ({@link #NEXT}).
 */
@Configuration(proxyBeanMethods = false)
public class ShutdownDrainConfiguration {

	/** The order of the first filter after the drain. */
	public static final int NEXT = Ordered.HIGHEST_PRECEDENCE + 1;

	@Bean
	ShutdownDrain shutdownDrain(@Value("${elves.shutdown.drain:0s}") Duration drain) {
		return new ShutdownDrain(drain);
	}

	@Bean
	FilterRegistrationBean<ShutdownDrain> shutdownDrainFilter(ShutdownDrain drain) {
		FilterRegistrationBean<ShutdownDrain> registration = new FilterRegistrationBean<>(drain);
		registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
		return registration;
	}

}
